"""Training data in memory: splits, target scaling, collation and size-bucketed loading.

Reading tables and files is :mod:`molprop.io` (``molprop.io.table.load_molecule_table`` etc.).
"""

from molprop.data.batch import GraphBatch, collate_graphs
from molprop.data.loader import GraphDataset, SizeBucketBatchSampler, make_loader
from molprop.data.scaling import TargetScaler
from molprop.data.splits import Split, make_split

__all__ = [
    "GraphBatch",
    "collate_graphs",
    "GraphDataset",
    "SizeBucketBatchSampler",
    "make_loader",
    "TargetScaler",
    "Split",
    "make_split",
]
