"""The record of work items: the local SQLite record now, the shared record's sync later."""
