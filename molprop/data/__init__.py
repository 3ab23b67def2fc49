"""Datasets: tables, splits, target scaling, collation and size-bucketed loading."""

from molprop.data.batch import GraphBatch, collate_graphs
from molprop.data.loader import GraphDataset, SizeBucketBatchSampler, make_loader
from molprop.data.scaling import TargetScaler
from molprop.data.splits import Split, make_split
from molprop.io.table import MoleculeTable, RowIssue, load_molecule_table, read_table

__all__ = [
    "GraphBatch",
    "collate_graphs",
    "GraphDataset",
    "SizeBucketBatchSampler",
    "make_loader",
    "TargetScaler",
    "Split",
    "make_split",
    "MoleculeTable",
    "RowIssue",
    "load_molecule_table",
    "read_table",
]
