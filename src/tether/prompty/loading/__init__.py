"""Loading (§4): a ``.prompty`` file's frontmatter and body read, inside its allowed folders,
into a validated ``PromptAgent``; ``loader`` is the entry point, ``reader`` turns the parsed
frontmatter into the model, ``files`` reads and splits the file and its references."""
