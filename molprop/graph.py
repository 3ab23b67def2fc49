"""The featurised molecule: a numpy-only, immutable graph container."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: what to install for the PyTorch Geometric conversions (an optional dependency)
PYG_HINT = "PyTorch Geometric is not installed: pip install molprop[pyg]"


@dataclass(frozen=True)
class MolGraph:
    """One molecule (or periodic system) as a graph. numpy only; torch comes at collation.

    Shapes:
        x: (n_nodes, node_dim) float32 node features.
        edge_index: (2, n_edges) int64, directed edges src -> dst (both directions present).
        edge_attr: (n_edges, edge_dim) float32 edge features.
        pos: optional (n_nodes, 3) float32 Cartesian coordinates (Å).
        edge_vec_shift: optional (n_edges, 3) float32 Cartesian image shift for periodic edges,
            so that ``pos[dst] + shift - pos[src]`` is the true bond vector.
        z: optional (n_nodes,) int64 atomic numbers (3D featurisers; read by the model's
            element-pair Gaussians).
        fingerprint: optional (N_BITS / 8,) uint8 packed Morgan bits (radius 2, 2048 bits,
            :mod:`molprop.chem.fingerprints`) of the parsed molecule, and ``heavy_atoms`` its
            heavy-atom count (2D featuriser): read by the applicability domain instead of
            parsing the SMILES again; not model inputs.
        smiles: optional SMILES the graph was built from after the chemistry checks
            (:mod:`molprop.chem.standardize`; set at prediction, the output's
            ``standardized_smiles``), or for a structure the SMILES of the molecule perceived
            from its coordinates (3D featuriser, mode ``bonds``; the applicability domain reads
            it); not a model input.
        n_atoms: number of atoms (equals n_nodes).

    :meth:`to_pyg` / :meth:`from_pyg` convert to and from a PyTorch Geometric ``Data`` (the
    optional extra ``molprop[pyg]``); the field mapping is in :meth:`to_pyg`.
    """

    x: np.ndarray
    edge_index: np.ndarray
    edge_attr: np.ndarray
    pos: np.ndarray | None = None
    edge_vec_shift: np.ndarray | None = None
    z: np.ndarray | None = None
    fingerprint: np.ndarray | None = None
    heavy_atoms: int | None = None
    smiles: str | None = None

    def __post_init__(self) -> None:
        if self.x.ndim != 2:
            raise ValueError(f"x must be 2-D, got shape {self.x.shape}")
        if self.edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must be (2, E), got {self.edge_index.shape}")
        if self.edge_attr.shape[0] != self.edge_index.shape[1]:
            raise ValueError("edge_attr and edge_index disagree on the number of edges")

    @property
    def n_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edge_index.shape[1])

    def to_pyg(self, y: Any = None) -> Any:
        """This graph as a ``torch_geometric.data.Data`` (needs ``pip install molprop[pyg]``).

        Every array is copied, dtypes kept (the featurisers write float32 features and int64
        indices). Fields that are None are left out. Mapping (PyG's ``Batch`` stacks
        the graphs' fields as the last column says):

        | MolGraph             | Data                       | Batch of B graphs             |
        |----------------------|----------------------------|-------------------------------|
        | x (N, F)             | x (N, F)                   | (sum N, F)                    |
        | edge_index (2, E)    | edge_index (2, E)          | (2, sum E), offset per graph  |
        | edge_attr (E, D)     | edge_attr (E, D)           | (sum E, D)                    |
        | pos (N, 3)           | pos (N, 3)                 | (sum N, 3)                    |
        | edge_vec_shift (E, 3)| edge_vec_shift (E, 3)      | (sum E, 3)                    |
        | z (N,)               | z (N,)                     | (sum N,)                      |
        | fingerprint (K,)     | fingerprint (1, K) uint8   | (B, K)                        |
        | heavy_atoms int      | heavy_atoms (1,) int64     | (B,)                          |
        | smiles str           | smiles str                 | list of B str                 |
        | (none)               | y (1, T) float32           | (B, T)                        |

        ``y``: optional targets of this graph (a number or T of them); not a MolGraph field
        (molprop keeps targets beside its graphs), so :meth:`from_pyg` does not read it.
        """
        try:
            import torch
            from torch_geometric.data import Data
        except ImportError as exc:
            raise ImportError(PYG_HINT) from exc

        def tensor(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.array(a, copy=True))

        fields: dict[str, Any] = {
            "x": tensor(self.x),
            "edge_index": tensor(self.edge_index),
            "edge_attr": tensor(self.edge_attr),
        }
        for name in ("pos", "edge_vec_shift", "z"):
            value = getattr(self, name)
            if value is not None:
                fields[name] = tensor(value)
        if self.fingerprint is not None:
            fields["fingerprint"] = tensor(self.fingerprint).reshape(1, -1)
        if self.heavy_atoms is not None:
            fields["heavy_atoms"] = torch.tensor([self.heavy_atoms], dtype=torch.int64)
        if self.smiles is not None:
            fields["smiles"] = self.smiles
        if y is not None:
            fields["y"] = torch.as_tensor(np.asarray(y, dtype=np.float32).reshape(1, -1))
        return Data(**fields)

    @classmethod
    def from_pyg(cls, data: Any) -> MolGraph:
        """The MolGraph of one PyG ``Data`` (the inverse of :meth:`to_pyg`, exact: same arrays,
        same dtypes). Reads the fields of :meth:`to_pyg`'s table; a missing ``edge_attr`` becomes
        (E, 0) float32 features; ``y`` and other attributes are not read. A batch of several
        graphs is refused (``batch.to_data_list()`` splits it). Needs no PyG import itself."""
        n_graphs = getattr(data, "num_graphs", 1)
        if n_graphs != 1:
            raise ValueError(
                f"from_pyg takes one graph, got a batch of {n_graphs} (use batch.to_data_list())"
            )

        def array(name: str) -> np.ndarray | None:
            value = getattr(data, name, None)
            if value is None:
                return None
            return np.array(value.detach().cpu().numpy(), copy=True)

        edge_index = array("edge_index")
        if edge_index is None:
            edge_index = np.zeros((2, 0), dtype=np.int64)
        edge_attr = array("edge_attr")
        if edge_attr is None:
            edge_attr = np.zeros((edge_index.shape[1], 0), dtype=np.float32)
        fingerprint = array("fingerprint")
        heavy_atoms = getattr(data, "heavy_atoms", None)
        smiles = getattr(data, "smiles", None)
        if isinstance(smiles, (list, tuple)):  # a one-graph Batch holds a list of one
            (smiles,) = smiles
        x = array("x")
        if x is None:
            raise ValueError("a PyG graph without node features x cannot become a MolGraph")
        return cls(
            x=x,
            edge_index=edge_index,
            edge_attr=edge_attr,
            pos=array("pos"),
            edge_vec_shift=array("edge_vec_shift"),
            z=array("z"),
            fingerprint=None if fingerprint is None else fingerprint.reshape(-1),
            heavy_atoms=None if heavy_atoms is None else int(heavy_atoms),
            smiles=smiles,
        )
