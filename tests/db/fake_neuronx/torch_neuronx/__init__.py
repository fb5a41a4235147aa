"""A stand-in for TorchNeuron's package in the `db probe --report` tests: only its private
compilation cache counters (torch_neuronx._C._get_compilation_cache_stats), nothing else."""
