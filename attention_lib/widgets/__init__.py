"""Interactive explorers (placeholder until the foundation lands; replaced by its __init__)."""
