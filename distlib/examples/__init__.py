"""Worker programs for the chapters "MPI" and "NCCL and GPU collectives".

Each module here is a complete SPMD program: every rank runs the same file.
Launch them from a shell::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.mpi_hello

or from a notebook, which never becomes a rank itself::

    import distlib.engines as de
    print(de.run_mpi("distlib.examples.mpi_hello", 4))
    print(de.run_torch("distlib.examples.torch_ddp:main", 2))

MPI programs: :mod:`mpi_hello`, :mod:`mpi_p2p`, :mod:`mpi_collectives`,
:mod:`mpi_rma`, :mod:`mpi_train`, :mod:`naive_ring_deadlock`.
torch.distributed programs: :mod:`torch_ddp`, :mod:`nccl_allreduce`.
Both engines: :mod:`faulty_rank` (a rank that dies, raises, leaves or hangs).
"""
