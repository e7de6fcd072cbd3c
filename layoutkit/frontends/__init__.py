"""Adapters that let a compiler use layoutkit as its layout solver.

:mod:`layoutkit.frontends.tilelang` reads a TileLang ``T.prim_func`` into an
:class:`~layoutkit.infer.Program`, converts layouts both ways and writes layoutkit's answer back as
TileLang annotations.  TileLang is an optional dependency (the ``tilelang`` extra): importing
layoutkit or this package never imports it.

>>> from layoutkit.frontends import tilelang as tl_frontend
>>> callable(tl_frontend.from_prim_func)
True
"""
