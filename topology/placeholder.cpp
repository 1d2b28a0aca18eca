// Placeholder so the library has a translation unit until the grid lands.
