"""Low -> high fidelity transfer learning: fidelity splits, fine-tuning strategies, datasets."""
