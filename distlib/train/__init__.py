"""The book's tiny real trainer: one small transformer, trained by every parallel layout on real ranks.

``python -m distlib.train --dp D --tp T --zero Z --steps K --seed S --engine mpi --json``
(:mod:`distlib.train.__main__`).
"""

__all__: list = []
