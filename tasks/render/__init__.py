"""Rendering: charts (SVG), and the HTML/PDF reports of audits, monitoring nights and comparisons."""
