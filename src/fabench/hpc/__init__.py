"""HPL and the HPC Challenge suite (Debian's `hpcc`): the input file, the output parser, the
BLAS it runs on, the machine's peak. HPL over many nodes (`fabench hpl nodes`, scaling) is
fabench.hpl.

One run's input and output: hpc.job. The starter that runs hpcc under an MPI flavour's
mpirun is fabench.starters.hpcc (ranks and files only); the kernels it stores (`hpcc.hpl`,
`hpcc.ptrans`, ...) are fabench.kernels.hpcc.
"""
