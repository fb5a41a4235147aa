"""Zoo outputs, one format per module: terminal, json, markdown, html (each reads a finished ZooRun)."""

FORMATS = {
    "terminal": "opscan.zoo.render.terminal",
    "json": "opscan.zoo.render.jsonout",
    "markdown": "opscan.zoo.render.markdown",
    "html": "opscan.zoo.render.html",
}
