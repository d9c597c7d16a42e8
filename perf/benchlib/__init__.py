"""What the benchmark scripts of perf/ share, so that each keeps only what it
measures and how it reports it:

  build       where the build's libraries and programs are (HCOPS_BUILD)
  child       running one benchmark process: its environment, errors, JSON result
  mpi         the mpirun command line of the MPI benchmarks
  rounds      the order of configurations round by round, medians over rounds
  report      tables, CSV files (rows or records with notes), plots and the machine they were measured on
  blas_peers  the BLAS libraries compared with libhcops.so and hcops-replay
  traces      the recorded DiT sgemm_ traces and their --quick subsets
  allocators  the allocators compared with libhcops_mem.so
  ops         the operators of ops_bench.py: names, DiT shapes, bytes moved, tolerances
  op_peers    what they run in: the PyTorch workers, oneDNN's primitive, the STREAM triad
  inputs      a measurement's JSON file, read for a projection

Scripts run from the source tree without installing anything: perf/X.py finds
this package beside itself (Python puts a script's folder first on sys.path);
perf/dit/X.py puts perf/ there first.
"""
