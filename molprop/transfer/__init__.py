"""Low -> high fidelity transfer learning: fidelity splits, fine-tuning strategies, datasets."""

#: the fine-tuning strategies (:mod:`molprop.transfer.strategies`); here, without torch, so the
#: CLI can list them cheaply
STRATEGIES = (
    "full",
    "freeze-encoder",
    "label-augment",
    "embed-augment",
    "delta",
    "delta-measured",
)
