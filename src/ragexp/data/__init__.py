"""Data: a corpus folder of documents with a JSONL golden set of cases over it (`dataset`), the
chunks a retriever indexes (`chunking`), and the bundled demo (``demo/``)."""
