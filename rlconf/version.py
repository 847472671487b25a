"""rlconf's version: what ``rlconf --version`` prints and every run's provenance.json records.

Its own module on the ground floor, so that a run directory's provenance reads it without importing the
package's public face (``rlconf/__init__.py`` imports the API, which sits on the top floor).
"""

__version__ = "0.1.0"
