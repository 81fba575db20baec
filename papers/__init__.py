"""One subpackage per paper; none imports another."""
