"""`sbert reproduce`: the recipes behind the papers' tables, run at this machine's scale."""
