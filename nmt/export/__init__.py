"""Exporting trained models to other inference engines (CTranslate2) and searching with them."""
