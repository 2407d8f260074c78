-- A confirmation's summary names path values (owner, repository, branch):
-- encrypted at rest from now on, as its arguments are (issue 45, the red
-- team's note). `summary` stays for rows written before, which expire
-- within a day; new rows leave it empty.
-- Keep this file in step with its twin in the other dialect's folder.
ALTER TABLE confirmations ADD COLUMN summary_enc TEXT;
