# A job's own sitecustomize, which uvmrun's must still let run.
import os

os.environ["USER_SITECUSTOMIZE"] = "ran"
