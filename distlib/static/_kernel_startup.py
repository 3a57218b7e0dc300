# Run by each kernel of a book build as it starts, not imported: the book's Sphinx extension
# (book/_ext/offline_book.py) names this file in PYTHONSTARTUP (distlib.static.kernel_environment),
# and IPython runs it in the notebook's namespace, so it binds no name there.
__import__("distlib.static.kernel", fromlist=["crisp_inline_figures"]).crisp_inline_figures()
