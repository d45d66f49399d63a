//! CSV files and SVG plots.
