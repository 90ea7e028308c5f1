"""Refresh the README's generated baselines table from the published rows."""
import re
from pathlib import Path
from imaginebench.evaluation.published import baselines_table
p = Path("/work/main/README.md")
t = p.read_text()
new = re.sub(r"(<!-- baselines-table:[^>]*-->\n)(.*?)(\n<!-- /baselines-table -->)", lambda m: m.group(1) + baselines_table() + m.group(3), t, flags=re.S)
p.write_text(new); print("changed" if new != t else "unchanged")
