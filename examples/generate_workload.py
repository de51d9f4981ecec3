#!/usr/bin/env python3
"""Greedy generation with a decoder-only model, timed token by token, for benchmarks.

A LlamaForCausalLM of about 3 B parameters in bf16 (the sizes are arguments) with random
weights made on the GPU from a fixed seed, a prompt of random token ids from the same seed,
one prefill, then a decode loop over a KV cache taking the argmax token each step. Prints one
JSON line per token and a final "SUMMARY {...}" line: the median ms a token after warm-up, the
token ids, the weights' and the KV cache's bytes, PyTorch's memory figures and, under
libuvmprefetch.so, the bytes the library moved (from uvmp_get_stats) after warm-up.

--accelerate-offload CAP: what a user does without the library when the weights do not fit:
accelerate's infer_auto_device_map with CAP bytes for the GPU, dispatch_model, the layers that do
not fit kept on the CPU and brought to the GPU by accelerate's hooks at each forward. The weights
are made on the GPU as in the other modes and moved to the CPU first, so they are the same.
"""
import argparse
import json
import os
import statistics
import sys
import time

from train_workload import deterministic_state, memory_figure, memory_figures, moved_between
from uvmp_library import LibraryCounters

INIT_STD = 0.02


def build(args, torch):
    """The model in bf16 on the GPU, every weight drawn from the seed in name order (so that the
    weights do not depend on how transformers initialises), and its config."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads or args.heads,
                         max_position_embeddings=max(4096, args.prompt + args.new_tokens + 1),
                         tie_word_embeddings=False, attn_implementation=args.attention)
    default_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # made in bf16: never the fp32 model's twice the bytes
    try:
        with torch.device("cuda"):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(default_dtype)
    generator = torch.Generator(device="cuda")
    generator.manual_seed(args.seed)
    with torch.no_grad():
        for _, parameter in sorted(model.named_parameters()):
            if parameter.dim() >= 2:
                parameter.normal_(0.0, INIT_STD, generator=generator)
            else:
                parameter.fill_(1.0)  # the RMSNorm scales
    model.eval()
    return model, config


def dispatch_with_accelerate(model, cap_bytes, host_bytes, torch):
    """The model's layers over the GPU (at most cap_bytes) and the CPU, as accelerate places them:
    (model, bytes of weights kept on the GPU, bytes on the CPU)."""
    from accelerate import dispatch_model, infer_auto_device_map

    model.to("cpu")
    torch.cuda.empty_cache()
    device_map = infer_auto_device_map(model, max_memory={0: cap_bytes, "cpu": host_bytes},
                                       no_split_module_classes=["LlamaDecoderLayer"], dtype=torch.bfloat16)
    sizes = {name: p.numel() * p.element_size() for name, p in model.named_parameters()}
    on_gpu = sum(size for name, size in sizes.items()
                 if placement(device_map, name) not in ("cpu", "disk"))
    # The cache is not moved by the hooks: it stays where the layers run (as from_pretrained does).
    model = dispatch_model(model, device_map=device_map, skip_keys=getattr(model, "_skip_keys_device_placement", None))
    return model, on_gpu, sum(sizes.values()) - on_gpu


def placement(device_map, name):
    """Where a device map puts a parameter: the entry of its longest prefix."""
    best = max((key for key in device_map if key == "" or name == key or name.startswith(key + ".")), key=len,
               default=None)
    return device_map.get(best, "cpu")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=3072)
    parser.add_argument("--layers", type=int, default=26)
    parser.add_argument("--intermediate", type=int, default=8192)
    parser.add_argument("--heads", type=int, default=24)
    parser.add_argument("--kv-heads", type=int, default=0, help="key/value heads (default: --heads)")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=512, help="prompt tokens (default 512)")
    parser.add_argument("--new-tokens", type=int, default=32, help="decode steps (default 32)")
    parser.add_argument("--warmup", type=int, default=8, help="decode steps left out of the median (default 8)")
    parser.add_argument("--attention", choices=("sdpa", "eager"), default="sdpa",
                        help="transformers' attention implementation (default sdpa)")
    parser.add_argument("--blas", choices=("default", "cublas", "cublaslt"), default="default",
                        help="PyTorch's BLAS library for matrix products (torch.backends.cuda."
                             "preferred_blas_library; default: PyTorch's choice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deterministic", action="store_true",
                        help="deterministic kernels, so that runs can be compared token for token")
    parser.add_argument("--mark-iterations", action="store_true", help="call uvmp_mark_iteration after each token")
    parser.add_argument("--accelerate-offload", type=int, default=0, metavar="CAP_BYTES",
                        help="place the layers with accelerate, at most CAP_BYTES of weights on the GPU, the rest "
                             "on the CPU streamed in by its hooks")
    parser.add_argument("--host-memory", type=int, default=512 << 30, metavar="BYTES",
                        help="accelerate's CPU memory for the weights (default 512 GiB)")
    args = parser.parse_args()
    if args.new_tokens < 1 or not 0 <= args.warmup < args.new_tokens:
        parser.error("--new-tokens must be at least 1 and --warmup below it")
    if args.accelerate_offload < 0:
        parser.error("--accelerate-offload must be a number of bytes")

    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    if args.deterministic:
        # Only the forward runs; an operation without a deterministic kernel warns rather than
        # stops the run (the token check across runs says whether it mattered).
        torch.use_deterministic_algorithms(True, warn_only=True)
    if args.blas != "default":
        torch.backends.cuda.preferred_blas_library(args.blas)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = False
    counters = LibraryCounters()
    build_start = time.perf_counter()
    model, config = build(args, torch)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    parameters = sum(p.numel() for p in model.parameters())
    prompt_generator = torch.Generator(device="cpu")
    prompt_generator.manual_seed(args.seed + 1)
    prompt = torch.randint(0, config.vocab_size, (args.batch, args.prompt), generator=prompt_generator).to("cuda")
    placed = None
    if args.accelerate_offload:
        model, on_gpu, on_cpu = dispatch_with_accelerate(model, args.accelerate_offload, args.host_memory, torch)
        placed = {"gpu_weight_bytes": on_gpu, "cpu_weight_bytes": on_cpu}
    torch.cuda.synchronize()
    build_s = time.perf_counter() - build_start
    head_dim = config.hidden_size // config.num_attention_heads
    kv_bytes = (2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * args.batch
                * (args.prompt + args.new_tokens) * 2)

    # The memory figures are those of the generation (accelerate's runs made the weights on the GPU).
    memory_figure(torch.cuda.reset_peak_memory_stats)
    token_ms, tokens = [], []
    with torch.inference_mode():
        torch.cuda.synchronize()
        start = time.perf_counter()
        output = model(input_ids=prompt, use_cache=True)
        next_ids = output.logits[:, -1, :].argmax(dim=-1, keepdim=True)
        torch.cuda.synchronize()
        prefill_ms = (time.perf_counter() - start) * 1e3
        cache = output.past_key_values
        tokens.append(next_ids[0, 0].item())
        if args.mark_iterations:
            counters.mark_iteration()
        last = warmed_up = counters.read()
        print(json.dumps({"prefill_ms": round(prefill_ms, 3), "token": tokens[-1]}), flush=True)
        for step in range(args.new_tokens):
            torch.cuda.synchronize()
            start = time.perf_counter()
            output = model(input_ids=next_ids, past_key_values=cache, use_cache=True)
            next_ids = output.logits[:, -1, :].argmax(dim=-1, keepdim=True)
            torch.cuda.synchronize()
            elapsed_ms = (time.perf_counter() - start) * 1e3
            cache = output.past_key_values
            if args.mark_iterations:
                counters.mark_iteration()
            now = counters.read()
            moved = moved_between(last, now)
            last = now
            if step + 1 == args.warmup:
                warmed_up = now
            token_ms.append(elapsed_ms)
            tokens.append(next_ids[0, 0].item())
            line = {"step": step, "ms": round(elapsed_ms, 3), "token": tokens[-1]}
            if moved is not None:
                line["moved"] = moved
            print(json.dumps(line), flush=True)
    summary = {
        "model": "llama", "parameters": parameters, "hidden": args.hidden, "layers": args.layers,
        "intermediate": args.intermediate, "heads": args.heads, "vocab": args.vocab, "batch": args.batch,
        "prompt": args.prompt, "new_tokens": args.new_tokens, "warmup": args.warmup,
        "mode": "accelerate" if args.accelerate_offload else "native",
        "accelerate_cap_bytes": args.accelerate_offload or None, "accelerate_placement": placed,
        "weight_bytes": weight_bytes, "kv_bytes": kv_bytes, "build_s": round(build_s, 2),
        "prefill_ms": round(prefill_ms, 3),
        "median_ms": statistics.median(token_ms[args.warmup:]), "token_ms": [round(ms, 3) for ms in token_ms],
        "tokens": tokens,
        "deterministic": deterministic_state(torch),
        **memory_figures(torch),
        "library": counters.present,
        # Bytes the library moved in the decode steps after warm-up, summed (None without it).
        "moved_after_warmup": moved_between(warmed_up, last),
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
