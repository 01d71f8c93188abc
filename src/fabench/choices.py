"""Choices and defaults the command line shows, kept where building the parser can read them
without importing the code that uses them (every `fabench --help` and usage error builds the
whole parser: this module imports nothing). The modules that use a value import it from here.
"""

# MPI datatypes a collective reduces and moves, as OSU's -T.
DATATYPES = ("char", "int", "float", "double")

# `fabench compare`: a relative change inside this band is no change (docs/statistics.md).
DEFAULT_TOLERANCE = 0.05

# `fabench congestion`: the aggressor patterns and the victims (congestion/victims.py defines
# each victim under these names).
CONGESTION_PATTERNS = ("incast", "alltoall", "bcast", "bulk")
CONGESTION_VICTIMS = ("latency", "allreduce", "bandwidth")

# `fabench diagnose reorder`: a frame of a bulk TCP stream at the usual MTU (1500 - 20 IP - 8
# UDP): a probe of full-sized datagrams meets the link as TCP's segments do.
REORDER_SIZE = 1472
# The windows swept: issue 16's sweep, document 001's W values among them.
REORDER_WINDOWS = (0, 8, 16, 32, 64, 80, 128)

# `fabench hpl nodes`: a node this far below the median is flagged. Document 000's consistent
# nodes spread 0.367 GFLOPS around 497.5 (0.07 %); 5 % is some 70 times that, the size of a
# node with a memory channel empty, a lower clock or SMT/turbo set apart from the others, not
# run-to-run noise.
HPL_NODE_THRESHOLD = 0.05

# `fabench model`: the collectives the model predicts (model/collectives.py's ALGORITHMS has
# one entry for each), the topologies it builds, and the fabric variants per prediction band.
COLLECTIVES = ("allreduce", "alltoall", "allgather", "gather", "bcast", "reduce")
TOPOLOGY_KINDS = ("fat-tree", "torus", "dragonfly", "single", "loopback")
BAND_SAMPLES = 32

# The tbf queue of a testbed link (tc `latency`: how long a packet may wait before tbf drops
# it). 50 ms, measured (docs/testbed.md): the host end of a link stands for a NIC, which never
# drops its own host's packets, and one TCP socket may keep up to tcp_limit_output_bytes (4 MiB
# here) queued below it. At 1gbit a 5 ms queue dropped 4500-9000 packets per mpi.bw run and
# gave 0.87 Gbit/s instead of 0.91. A short queue suits exchanges (ACKs then wait less behind
# data): --queue.
TESTBED_QUEUE = "50ms"

# The level of `model predict`'s prediction intervals (model.published.NOMINAL)
PREDICTION_LEVEL = 0.90

# fabench history: the permutation test's level, the smallest change a centre wants to hear
# about (a policy, not a measurement: set it per series with --tolerance, as ReFrame's reference
# bands), campaigns needed on each side of a change, random orders per test.
HISTORY_ALPHA = 0.05
HISTORY_TOLERANCE = 0.10
HISTORY_MIN_NIGHTS = 2
HISTORY_PERMUTATIONS = 999

# Fabric families with published defaults, and in-network reduction kinds (`fabench model`).
FAMILIES = ("ib", "roce", "ethernet", "tcp", "custom")
IN_NETWORK_KINDS = ("sharp1", "sharp2", "roce-inc", "generic")
