#!/usr/bin/env python3
"""A small JAX MLP trained with jit for a few steps (run with
XLA_PYTHON_CLIENT_PREALLOCATE=false, so that XLA allocates as it goes). Prints the
losses and a digest of the final weights as one RESULT line."""

import hashlib
import json

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 50
key = jax.random.PRNGKey(20261202)
k1, k2, k3, k4 = jax.random.split(key, 4)
params = {"w1": jax.random.normal(k1, (512, 2048)) * 0.02, "b1": jnp.zeros(2048),
          "w2": jax.random.normal(k2, (2048, 512)) * 0.02, "b2": jnp.zeros(512)}
x = jax.random.normal(k3, (1024, 512))
y = jax.random.normal(k4, (1024, 512))


def loss_fn(p, x, y):
    h = jax.nn.gelu(x @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


@jax.jit
def step(p, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, g: a - 0.05 * g, p, grads), loss


losses = []
for _ in range(STEPS):
    params, loss = step(params, x, y)
    losses.append(float(loss))
digest = hashlib.sha256(b"".join(np.asarray(params[k]).tobytes() for k in sorted(params))).hexdigest()
print("RESULT " + json.dumps({"losses": [repr(v) for v in losses], "weights": digest}), flush=True)
