ALTER TABLE request_inspections ALTER COLUMN record TYPE json USING record::json;
