CREATE OR REPLACE FUNCTION public.schema_variant()
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$ select 'plain'::text $function$;
