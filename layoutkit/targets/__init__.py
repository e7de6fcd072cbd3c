"""Hardware targets: NVIDIA (``nv``) and Ascend (``ascend``)."""
