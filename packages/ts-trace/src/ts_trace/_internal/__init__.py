"""Private implementation of ts-trace; nothing here is public API."""
