"""Published leaderboards: tables read from Markdown, LaTeX and CSV, their cells and names, and reproducing them."""
