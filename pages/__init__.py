"""Streamlit pages of the studio (run by app.py through st.navigation); shared state in common.py."""
