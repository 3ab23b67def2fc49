"""The pretraining corpus: molecules gathered from offline sources, standardised, deduplicated
by InChIKey (:mod:`.build`), and their computed labels, RDKit 2D descriptors (:mod:`.labels`).

Nothing here trains or loads a model; the corpus directory is what
``molprop.training.foundation`` reads.
"""

from molprop.corpus.build import CorpusSource, build_corpus, default_sources, read_corpus
from molprop.corpus.labels import compute_labels, load_scaled_labels

__all__ = [
    "CorpusSource",
    "build_corpus",
    "compute_labels",
    "default_sources",
    "load_scaled_labels",
    "read_corpus",
]
