"""One parser per format, all returning `model.ParsedFile`."""
