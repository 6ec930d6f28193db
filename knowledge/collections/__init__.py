"""Document collections: named knowledge bases of uploaded documents, chunked, embedded and retrieved."""
