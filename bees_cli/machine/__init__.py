"""This computer: its paths, identity, folder links and add-on connections."""
