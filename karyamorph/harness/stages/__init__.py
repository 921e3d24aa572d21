"""The pipeline's stages: each a small object with one run(context) -> StageResult."""
