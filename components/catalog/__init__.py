"""Pure data: models, accelerators, images and versions, names and labels."""
