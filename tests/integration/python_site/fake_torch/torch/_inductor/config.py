# As in Inductor's config: CUDA-graph trees on by default.
class triton:
    cudagraphs = False
    cudagraph_trees = True
