def tokenize(texts):
    return [list(t.encode()) for t in texts]
