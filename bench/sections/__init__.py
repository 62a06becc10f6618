"""One module per section of issue #5; each has `NAME`, `TITLE` and `run(ctx) -> SectionResult`."""
