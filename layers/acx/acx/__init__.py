"""acx: the memory cartridge service core, adapters, use cases, CLI and local stack."""
