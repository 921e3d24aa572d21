"""PTX as data: parser, printer, builder, instruction catalog, version tables."""
