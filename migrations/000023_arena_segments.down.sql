-- Segments are derived: code before 000023 loads from the rows alone.
DROP TABLE arena_segments;
