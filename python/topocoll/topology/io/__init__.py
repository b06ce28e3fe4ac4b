"""Readers for real fabric descriptions: ibnetdiscover (plain and ``-p``),
ibroute forwarding tables, Slurm ``topology.conf`` and hostfiles."""

from .ibnetdiscover import parse_ibnetdiscover
from .ibroute import parse_ibroute, read_ibroute_dir
from .slurm import expand_hostlist, read_hostfile, read_slurm_topology_order

__all__ = ["parse_ibnetdiscover", "parse_ibroute", "read_ibroute_dir", "expand_hostlist",
           "read_hostfile", "read_slurm_topology_order"]
