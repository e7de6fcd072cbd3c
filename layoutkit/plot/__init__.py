"""plot_layout and text views (coming with the plotting issue)."""
