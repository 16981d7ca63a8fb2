"""The rank's own module (tests/e2e/scripts/warm_job.py imports it): a warm
standby must not import it before the script does."""
