"""Reports from results directories: the PTF's tables (`tables`), release comparisons with gates
(`compare`), rendered as Markdown, self-contained HTML with charts, or on the console."""
