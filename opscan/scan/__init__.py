"""Source scan: libcst rules over the files of a tree; never imports the scanned code."""
