"""The evaluation stage: answers from every system, the judges, their calibration, and the OOD gate."""
