"""The built-page tests (a package, so that their module names do not collide with tests/)."""
