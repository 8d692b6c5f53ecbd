"""The pages: the HTML views and the front-end libraries they load (vendor)."""
