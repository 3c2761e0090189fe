"""Bees Cloud: the server that grants owners and schedule keys and keeps the shared record."""
