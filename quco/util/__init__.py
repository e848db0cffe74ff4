"""The ground floor: reading what a user gives (userinput, schema), writing files atomically
(atomic), and fanning independent work out to processes or a Dask cluster (parallel). Nothing
here knows the unit, the GST or the model; every other folder of quco may import it."""
