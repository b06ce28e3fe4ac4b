"""Readers for real fabric descriptions: ibnetdiscover (plain and ``-p``),
ibroute forwarding tables, Slurm ``topology.conf`` and hostfiles, SimGrid
platform files (in and out) and Cray ``rtr --interconnect`` link lists."""

from .cray import read_rtr
from .ibnetdiscover import parse_ibnetdiscover
from .ibroute import parse_ibroute, read_ibroute_dir
from .simgrid import read_simgrid, write_simgrid
from .slurm import expand_hostlist, read_hostfile, read_slurm_topology_order

__all__ = ["parse_ibnetdiscover", "parse_ibroute", "read_ibroute_dir", "expand_hostlist",
           "read_hostfile", "read_slurm_topology_order", "read_simgrid", "write_simgrid", "read_rtr"]
