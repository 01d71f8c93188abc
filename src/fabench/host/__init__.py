"""The host under fabench: the processes it starts and their supervision, what it probes
(cores, topology, counters, TCP state, provenance), where ranks go."""
